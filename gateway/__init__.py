"""The Agent gateway: owns the ReAct loop, its state and the events clients see."""
