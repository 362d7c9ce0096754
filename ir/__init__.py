"""Graph IR, loop IR, views, rule tables and graph passes (imports nothing else of lazytensor)."""
