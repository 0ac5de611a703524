"""Reading recordings: a recorded log read from JSONL or a store, the errors every layer raises, the `{{cwd}}` and
`{{fromRequest:...}}` placeholders recorded text holds, a scenario directory's file names, and a replayed log read
back. The lowest of replay's layers: it imports nothing else of dsh.replay. Public names are dsh.replay's."""
