//! Partial batch failures (docs/design.md "Jobs"): a message named in `batchItemFailures` is
//! redelivered by SQS after its visibility timeout; every other message of the batch is deleted.
//! The worker's failed jobs and the jobs it holds back without a queue are named here alike.

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse};

/// Name message `id` in `batchItemFailures`, so SQS redelivers it; `false` when it has no id
/// (SQS always sets one) and cannot be named.
pub fn name_for_redelivery(response: &mut SqsBatchResponse, id: Option<String>) -> bool {
    let Some(id) = id.filter(|id| !id.is_empty()) else {
        return false;
    };
    let mut failure = BatchItemFailure::default();
    failure.item_identifier = id;
    response.batch_item_failures.push(failure);
    true
}
