//! Instrumentation (placeholder while the translation lands).
