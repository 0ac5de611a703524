"""The script: what a recording says the run does, derived from its logs (the calls keyed by turn, step and attempt,
the inputs and where they were spliced, the context edits, the skeleton compared, the workspace instructions), with
the overrides applied, bundled as a `Recording`. Imports only `recordings`. Public names are dsh.replay's."""
