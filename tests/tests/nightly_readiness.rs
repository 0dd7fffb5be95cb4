//! The nightly readiness job as `vitals serve` and the Lambda run it, on a clock the
//! test controls, on the embedded store and on DynamoDB (the emulator named by
//! `VITALS_TEST_DYNAMODB_ENDPOINT`).

mod embedded {
    vitals_tests::nightly_suite!(vitals_tests::backends::embedded);
}

mod dynamodb {
    vitals_tests::nightly_suite!(vitals_tests::backends::dynamodb);
}
