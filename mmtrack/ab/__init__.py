"""Same-machine A/B: commits built in isolated environments, interleaved rounds, bisect."""
