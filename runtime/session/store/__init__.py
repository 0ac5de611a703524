"""The session stores: the contract every store keeps (`_protocol`), what they share (`_base`: the value types and
`StoreBase`; `_rows`: the row codecs), SQLite's `SessionStore` (`sqlite`) and PostgreSQL's `PgStore` (`pg`), and
`open_store` (`_open`), the one place outside this package that names a backend. All of dsh's SQL lives here.

The public names are `dsh.runtime.session`'s; this package's `__init__` imports nothing, so a reader of one module
(the msgspec-free `_listing` of `dsh sessions list`) loads no other."""
