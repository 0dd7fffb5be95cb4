//! Days, weeks and clock changes (`vitals_tests::instants`) on the embedded store.

vitals_tests::instants_suite!(vitals_tests::backends::embedded);
