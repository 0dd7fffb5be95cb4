//! The storage conformance suite on the embedded (redb) backend.

vitals_tests::conformance_suite!(vitals_tests::backends::embedded);
