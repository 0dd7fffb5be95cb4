//! The storage conformance suite on the DynamoDB backend, against the emulator named by
//! `VITALS_TEST_DYNAMODB_ENDPOINT`. Without it every test fails with instructions: this
//! suite never passes by skipping.

vitals_tests::conformance_suite!(vitals_tests::backends::dynamodb);
