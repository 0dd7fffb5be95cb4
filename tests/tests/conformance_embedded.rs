//! The storage conformance suite on the embedded (fjall) backend.

vitals_tests::conformance_suite!(vitals_tests::backends::embedded);
