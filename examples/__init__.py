"""The example deployments (`coding-agent.yml`, `acp-agent.yml`) and the demo recording (`demo/`, the authored
`fs-tools` scenario), shipped in the wheel as package data: `dsh run --config coding-agent` and `--replay demo` find
them by name outside a checkout. Data only; nothing here is imported for code."""
