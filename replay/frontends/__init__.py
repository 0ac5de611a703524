"""The front ends: the pytest plugin and its goldens, the `dsh replay` command, batch replays and the stored-session
re-run report. The top of replay's layers. Public names are dsh.replay's."""
