"""The front door every door goes through: the caller, its limits, what each request does."""
