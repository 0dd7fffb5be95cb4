//! Projector workers, runtime and replay (built in the pipeline issue).
