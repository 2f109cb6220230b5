"""The core every layer stands on: findings and the report, the rule registry, the one fix
engine, family options, errors, the output gate (nothing replaced that curate did not write,
atomic writes, clean interrupts), the engines (threads, process pools, Ray), plot and stream
types, and the version.

May import: nothing of curate outside ``curate.core``. Kept free of heavy imports at package
level (this file imports nothing), because worker processes import ``curate.core`` modules
and should pay only for what they use.
"""
