//! Days, weeks and clock changes (`vitals_tests::instants`) on DynamoDB (the emulator
//! named by `VITALS_TEST_DYNAMODB_ENDPOINT`).

vitals_tests::instants_suite!(vitals_tests::backends::dynamodb);
