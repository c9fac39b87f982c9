/** The `emceepee://diagrams` resource: how the proxy tools' flows go, as mermaid diagrams. */
export const DIAGRAMS_URI = 'emceepee://diagrams';

export const DIAGRAMS_RESOURCE = {
  uri: DIAGRAMS_URI,
  name: 'diagrams',
  title: 'Proxy tool flows',
  description: 'Mermaid diagrams of execute_tool, input requests, tasks and await_activity',
  mimeType: 'text/markdown',
} as const;

export const DIAGRAMS_TEXT = `# Proxy tool flows

## execute_tool, and a backend that asks for input (multi round-trip)

\`\`\`mermaid
sequenceDiagram
    participant C as Client
    participant G as Gateway (execute_tool)
    participant B as Backend server
    C->>G: tools/call execute_tool {server, tool, arguments}
    G->>B: tools/call tool
    B-->>G: elicitation/create (mid-call)
    alt the client declared elicitation
        G-->>C: input_required {inputRequests, requestState}
        C->>G: tools/call execute_tool + inputResponses + requestState
        G-->>B: the answer
    else it did not
        G-->>C: (on its next tool response) pending_client_action
        C->>G: tools/call respond_to_elicitation {requestId, action, content}
        G-->>B: the answer
    end
    B-->>G: result
    G-->>C: {result} + events_since_last_response + pending_client_action
\`\`\`

## execute_tool past its timeout: a task

\`\`\`mermaid
sequenceDiagram
    participant C as Client
    participant G as Gateway
    participant B as Backend server
    C->>G: execute_tool {timeout_ms}
    G->>B: tools/call
    Note over G: timeout_ms passes (time spent waiting for the client does not count)
    G-->>C: {timeout: true, task, server_pending}
    C->>G: await_activity
    B-->>G: result
    G-->>C: triggers [task_completed], events, pending_server, pending_client
    C->>G: get_task_result {taskId}
    G-->>C: {status: completed, result}
\`\`\`

## await_activity

\`\`\`mermaid
flowchart TD
    A[await_activity] --> B{undelivered events?}
    B -- yes --> R[return: trigger immediate]
    B -- no --> W[wait for the next event or timeout_ms]
    W -- event --> E[return: trigger event]
    W -- timeout --> T[return: trigger timeout]
    R & E & T --> S[events by server, working tasks by server, pending client requests, lastEventId]
\`\`\`
`;
