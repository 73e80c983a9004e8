"""The run lifecycle in one gateway: start, lease, follow, live events across gateways, recover, fork.

`manager.RunManager` composes the collaborators (the starter, the followers, the live feed) and
owns the runs executing in this process (`active.ActiveRun`). Stands on the loop and below.
"""
