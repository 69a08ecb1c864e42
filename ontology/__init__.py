"""Value ontology: schema and seeded versions, labelers, rounds, agreement, rewriting."""
