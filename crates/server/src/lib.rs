//! engram as a service: the HTTP API (`http`), MCP (`mcp`), the web console, and
//! [`startup::Application`], which wires them to the database and the worker.

pub mod http;
pub mod mcp;
pub mod startup;
