"""Framework plugins: actorflow.plugin.pytorch (imports torch when used)."""
