//! The review's regression specifications on the embedded store.

vitals_tests::regressions_suite!(vitals_tests::backends::embedded);
