"""The operator's rules the loop consults: hooks, loop detection, the context budget.

Pure rules over the contract's messages, standing on the kernel alone: the run's state
(gateway.journal.state) carries their settings, the loop applies them.
"""
