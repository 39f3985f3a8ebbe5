//! The OpenAPI document (`openapi.json`, served at `GET /api/openapi.json`) as a test oracle: every
//! answer a test reads through [`checked_reply`](crate::apigw::checked_reply) must validate against
//! the schema the document gives its route, method and status, with a real JSON Schema validator
//! (draft 2020-12, formats checked).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use jsonschema::Validator;
use serde_json::Value;

/// The document as the function serves it.
pub fn document() -> &'static Value {
    static DOC: LazyLock<Value> = LazyLock::new(|| {
        serde_json::from_str(shared::api::openapi::DOCUMENT).expect("openapi.json is JSON")
    });
    &DOC
}

/// The document's path template that `path` (a concrete request path, no query) matches. A
/// `{path}` parameter in last place takes the rest of the path (API Gateway's `{path+}`).
pub fn template_of(path: &str) -> Option<String> {
    let want: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let paths = document()["paths"].as_object()?;
    // Literal templates first, so `/api/sync/runs` never reads as `/api/sync/runs/{id}`.
    let mut templates: Vec<&String> = paths.keys().collect();
    templates.sort_by_key(|t| t.matches('{').count());
    templates
        .into_iter()
        .find(|t| template_matches(t, &want))
        .cloned()
}

fn template_matches(template: &str, want: &[&str]) -> bool {
    let parts: Vec<&str> = template.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i == parts.len() - 1;
        if *part == "{path}" && last {
            return want.len() > i;
        }
        let Some(seg) = want.get(i) else {
            return false;
        };
        let param = part.starts_with('{') && part.ends_with('}');
        let matches = if param { !seg.is_empty() } else { part == seg };
        if !matches {
            return false;
        }
    }
    parts.len() == want.len()
}

/// A validator for the schema at `pointer` of the document (cached: building one is not free).
fn validator(pointer: &str) -> Arc<Validator> {
    static CACHE: LazyLock<Mutex<HashMap<String, Arc<Validator>>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache
        .entry(pointer.to_owned())
        .or_insert_with(|| {
            // The whole document is the root, so `#/components/...` references resolve.
            let mut root = document().clone();
            root["$ref"] = Value::String(format!("#{pointer}"));
            let v = jsonschema::draft202012::options()
                .should_validate_formats(true)
                .build(&root)
                .unwrap_or_else(|e| panic!("schema at {pointer} does not compile: {e}"));
            Arc::new(v)
        })
        .clone()
}

/// A JSON pointer token as it appears in a URI fragment (`{` and `}` percent-encoded).
fn escape(token: &str) -> String {
    token
        .replace('~', "~0")
        .replace('/', "~1")
        .replace('{', "%7B")
        .replace('}', "%7D")
}

/// Panics unless `body` is what the document promises for `method path` answering `status`.
pub fn check_response(method: &str, path: &str, status: u16, body: &Value) {
    // API Gateway's named stage in front of the route (`/prod/api/...`) is not part of it.
    let routed = template_of(path).or_else(|| {
        let rest = path.strip_prefix('/')?.split_once('/')?.1;
        template_of(&format!("/{rest}"))
    });
    let Some(template) = routed else {
        // Unknown paths are answered 404 by every function: the failure envelope.
        assert_eq!(
            status, 404,
            "{method} {path}: no path of openapi.json matches"
        );
        return check_schema("/components/schemas/Failure", body, method, path, status);
    };
    let op = &document()["paths"][&template][method.to_ascii_lowercase()];
    if op.is_null() {
        // Undocumented methods are answered 405 by every function: the failure envelope.
        assert_eq!(status, 405, "{method} {template} is not in openapi.json");
        return check_schema("/components/schemas/Failure", body, method, path, status);
    }
    let code = status.to_string();
    assert!(
        op["responses"][&code].is_object(),
        "{method} {template}: status {status} is not documented (body {body})"
    );
    let pointer = format!(
        "/paths/{}/{}/responses/{code}/content/application~1json/schema",
        escape(&template),
        method.to_ascii_lowercase()
    );
    check_schema(&pointer, body, method, path, status);
}

/// Panics unless `instance` validates against the schema at `pointer`.
pub fn check_schema(pointer: &str, instance: &Value, method: &str, path: &str, status: u16) {
    let v = validator(pointer);
    let errors: Vec<String> = v
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{method} {path} -> {status}: the answer does not match openapi.json: {errors:?}\n{instance}"
    );
}

/// Whether `instance` validates against the schema at `pointer` (for request-body schemas).
pub fn is_valid(pointer: &str, instance: &Value) -> bool {
    validator(pointer).is_valid(instance)
}
