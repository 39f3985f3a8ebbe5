//! Thin Lambda entry point: logging, then the handler from `shared` (added with its issue).

use lambda_http::{Body, Error, Request, Response, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::telemetry::init(true);
    run(service_fn(|_req: Request| async {
        Ok::<_, Error>(
            Response::builder()
                .status(501)
                .header("content-type", "application/json")
                .body(Body::from(
                    r#"{"success":false,"error":{"message":"not implemented","code":"not_implemented"}}"#,
                ))?,
        )
    }))
    .await
}
