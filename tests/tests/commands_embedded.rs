//! The command handlers' specifications on the embedded (fjall) backend.

vitals_tests::commands_suite!(vitals_tests::backends::embedded);
