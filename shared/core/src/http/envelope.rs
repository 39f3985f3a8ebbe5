//! The one HTTP body shape every endpoint answers with (docs/design.md "Shape"):
//! success `{"success": true, "data": ...}`, failure
//! `{"success": false, "error": {"message": "...", "code": "..."}}`.

use serde::Serialize;
use serde_json::{Value, json};

/// The success body around `data`.
pub fn success<T: Serialize>(data: T) -> Value {
    json!({ "success": true, "data": data })
}

/// The failure body. `code` is omitted where the contract says a status carries none.
pub fn failure(message: &str, code: Option<&str>) -> Value {
    let mut error = json!({ "message": message });
    if let Some(code) = code {
        error["code"] = Value::String(code.to_owned());
    }
    json!({ "success": false, "error": error })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(
            success(json!({"synced": true})).to_string(),
            r#"{"data":{"synced":true},"success":true}"#
        );
        assert_eq!(
            failure("bad", None),
            json!({"success": false, "error": {"message": "bad"}})
        );
        assert_eq!(
            failure("no", Some("feature_disabled"))["error"]["code"],
            "feature_disabled"
        );
    }
}
