//! W&B's public GraphQL API, as W&B's own client calls it: `POST $WANDB_BASE_URL/graphql`
//! (default `https://api.wandb.ai`) with HTTP basic auth `api:$WANDB_API_KEY`.

use serde_json::{json, Value};

/// W&B's API address: `$WANDB_BASE_URL`, else W&B's cloud.
pub fn base_url() -> String {
    std::env::var("WANDB_BASE_URL").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| "https://api.wandb.ai".into()).trim_end_matches('/').to_string()
}

/// The API key, or a line saying what needs it (`what`).
pub fn api_key(what: &str) -> Result<String, String> {
    std::env::var("WANDB_API_KEY").map_err(|_| format!("W&B: set WANDB_API_KEY to {what}"))
}

/// The answer to a GraphQL query (`{"data": …}` or `{"errors": […]}`); a failure is one line
/// that never holds the key.
pub fn graphql(query: &str, variables: Value, what: &str) -> Result<Value, String> {
    let key = api_key(what)?;
    let url = format!("{}/graphql", base_url());
    let body = json!({"query": query, "variables": variables});
    crate::remote::block_on(async move {
        let response = reqwest::Client::new()
            .post(&url)
            .basic_auth("api", Some(key))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| format!("W&B {url}: {}", crate::remote::one_line(&e.to_string())))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| format!("W&B {url}: {e}"))?;
        if !status.is_success() {
            return Err(format!("W&B {url}: HTTP {status}: {}", crate::remote::one_line(&text)));
        }
        serde_json::from_str(&text).map_err(|e| format!("W&B {url}: not JSON: {e}"))
    })
}

/// The messages of a GraphQL answer's `errors`, if it has any.
pub fn errors(answer: &Value) -> Option<String> {
    let errors = answer.get("errors").and_then(Value::as_array).filter(|e| !e.is_empty())?;
    Some(errors.iter().filter_map(|e| e["message"].as_str()).collect::<Vec<_>>().join("; "))
}
