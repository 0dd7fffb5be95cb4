//! Command handlers, one module per context (built in the command-side issue).
