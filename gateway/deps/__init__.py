"""What the gateway depends on: its connections to the Reasoner and the ToolService, and their catalogs.

Stands on the kernel alone: channels with wait-for-ready and retries, and the cached views of the
tools and models those services offer.
"""
