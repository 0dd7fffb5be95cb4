//! Query handlers over projection rows only (built in the read-side issue).
