// Package mcpconn connects to an upstream MCP server — a source, executor
// or readback declared as "mcp" — over stdio (a command the process starts)
// or streamable HTTP (a URL), and calls its tools with JSON arguments.
// [Dial] connects; [Session.Call] returns a tool's structured result.
package mcpconn
