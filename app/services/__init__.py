"""I/O and threads behind a callback API (no Qt): transports, agent deploy, run sessions, the store."""
