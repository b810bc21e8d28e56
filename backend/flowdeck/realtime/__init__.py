"""Live updates over Socket.IO (SPEC §9): a room per run, fed by the engine's publisher."""
