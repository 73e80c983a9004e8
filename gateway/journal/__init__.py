"""A run as it is recorded: its state, how that is stored and how clients hear of it.

- `state`: the run's state and the updates nodes return;
- `convert`: the one conversion between what the gateway holds (state, stored rows) and the
  contract's messages: checkpoints, final events, run infos, enums;
- `events`: run events as clients see them, numbered, and the gate that releases them;
- `run_journal`: where a run writes itself down (checkpoints, tool results, memories);
- `budget`: what one response may hold.

Stands on the store and the policies; the loop and the run lifecycle stand on it.
"""
