"""The package version, in the lowest layer so that every module can name it without importing
the package root (whose lazy API attributes would otherwise make a cycle: root → api → publish →
root)."""

__version__ = "0.1.0"
