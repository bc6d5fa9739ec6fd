//! `engram import FILE`: a user's data from an engram export or Mem0's `get_all`,
//! through the same import as `POST /v1/users/{user_id}/import`.

use std::path::Path;

use anyhow::{Context, bail};

use engram_base::auth;
use engram_base::configuration::Settings;
use engram_base::db::Database;
use engram_base::domain::{TenantId, UserId};
use engram_base::tls::Trust;

/// `engram import`'s arguments and document, read before the database opens.
pub struct ImportArgs {
    tenant: TenantId,
    user: Option<UserId>,
    doc: serde_json::Value,
}

pub fn read(file: &Path, tenant: &str, user: Option<&str>) -> anyhow::Result<ImportArgs> {
    let tenant = TenantId::parse(tenant).map_err(|e| anyhow::anyhow!("--tenant: {}", e.message))?;
    let user = user.map(UserId::parse).transpose().map_err(|e| anyhow::anyhow!("--user: {}", e.message))?;
    let text = std::fs::read(file).with_context(|| format!("cannot open {}", file.display()))?;
    let doc = serde_json::from_slice(&text)
        .map_err(|err| anyhow::anyhow!("{}: is not valid JSON ({err}); nothing was imported", file.display()))?;
    Ok(ImportArgs { tenant, user, doc })
}

pub async fn run(db: &Database, settings: &Settings, file: &Path, args: ImportArgs) -> anyhow::Result<()> {
    let trust = Trust::from_settings(&settings.tls).map_err(anyhow::Error::msg)?;
    let metrics = engram_base::metrics::Metrics::new();
    let embedder = engram_base::models::Embedder::from_settings(&settings.embeddings, &settings.home, &trust, metrics)?;
    auth::add_tenant(&mut *db.pool.acquire().await?, &args.tenant).await?;
    let importer = engram_core::imports::Importer {
        db,
        embedder: &embedder,
        secret_kinds: &settings.ingest.redact,
        actor: engram_base::domain::Actor::Cli.to_string(),
        graph_scan_limit: settings.graph.scan_limit,
    };
    match importer.import(&args.tenant, args.user.as_ref(), args.doc).await {
        Ok(imported) => {
            println!("{}", serde_json::to_string_pretty(&imported)?);
            Ok(())
        }
        Err(engram_core::imports::ImportError::Invalid(err)) => {
            bail!("{}: {err}; nothing was imported", file.display())
        }
        Err(engram_core::imports::ImportError::Failed(err)) => {
            Err(err.context("the import failed; nothing was imported"))
        }
    }
}
