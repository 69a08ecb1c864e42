"""Memory conflicts (seed 002): banks of conflicting memories, rubric judges, policies."""
