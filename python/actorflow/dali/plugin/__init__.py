"""DALI's framework plugins: actorflow.dali.plugin.pytorch."""
