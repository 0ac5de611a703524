"""Driving a re-run: the replay adapter, the authored (scripted) model, the replay plugin and what it serves from the
recording (tools, approvals, hooks, held input), wire replay, the scenario and its deployments, and `rerun`.
Imports `script` and `recordings`, never a front end. Public names are dsh.replay's."""
