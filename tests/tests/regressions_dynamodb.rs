//! The review's regression specifications on DynamoDB (the emulator named by
//! `VITALS_TEST_DYNAMODB_ENDPOINT`).

vitals_tests::regressions_suite!(vitals_tests::backends::dynamodb);
