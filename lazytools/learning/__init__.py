"""Learning from use: the usage log, its stores (SQLite here, Redis shared by replicas) and the decayed prior built
from them. It may import search's lower parts (text analysis); search never imports it and reads the prior only
through `search.prior.Prior`, which the assembly root hands in."""
