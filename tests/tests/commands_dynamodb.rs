//! The command handlers' specifications on the DynamoDB backend, against the emulator
//! named by `VITALS_TEST_DYNAMODB_ENDPOINT` (required: never passes by skipping).

vitals_tests::commands_suite!(vitals_tests::backends::dynamodb);
