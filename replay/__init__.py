"""Record, replay and golden tooling for dsh sessions."""
