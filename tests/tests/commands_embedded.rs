//! The command handlers' specifications on the embedded (redb) backend.

vitals_tests::commands_suite!(vitals_tests::backends::embedded);
