//! What every handler can reach.

use crate::configuration::Settings;
use crate::db::Database;
use crate::metrics::Metrics;

pub struct AppState {
    pub db: Database,
    pub settings: Settings,
    pub metrics: Metrics,
}
