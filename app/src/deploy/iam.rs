//! What the template's roles share: the trust policy letting one AWS service assume a
//! role.

use serde_json::{Value, json};

/// The policy document letting `service` (such as `lambda.amazonaws.com`) assume the
/// role.
pub fn assumed_by(service: &str) -> Value {
    json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Service": service},
            "Action": "sts:AssumeRole"
        }]
    })
}
