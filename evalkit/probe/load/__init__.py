"""Load shapes: closed and open loops, the buyer's sessions, a trace replayed, a level's
shard run in another process and the Ray pool of them. Stands on the client."""
