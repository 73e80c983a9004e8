"""``python -m agentloop.scripted_model``: serve the scripted model until SIGINT or SIGTERM."""

from agentloop.scripted_model.cli import build_parser, load_script, main, serve

__all__ = ["build_parser", "load_script", "main", "serve"]

if __name__ == "__main__":
    raise SystemExit(main())
