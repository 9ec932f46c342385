"""The store's ground: engines and their options, the schema, the records that leave
the store, the database file's identity, and the transaction helpers every aggregate
composes (``StoreBase.write`` / ``read``, ``record_event``, ``lock_runs``).

Imports nothing else of the store.
"""
