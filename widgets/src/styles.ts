// Theming goes through custom properties (--sift-*) and ::part(); logical properties keep the
// layout right in right-to-left documents, whose direction the shadow tree inherits.
export const styles = `
:host{display:inline-block;position:relative;inline-size:20em;max-inline-size:100%;font:var(--sift-font,inherit);color:var(--sift-color-text,#1f2328)}
:host([hidden]),[hidden]{display:none!important}
*{box-sizing:border-box}
[part~=field]{position:relative}
input{inline-size:100%;min-block-size:44px;margin:0;padding-block:.5em;padding-inline:.75em 2.25em;font:inherit;color:inherit;background:var(--sift-color-bg,#fff);border:1px solid var(--sift-color-border,#6e7781);border-radius:var(--sift-radius,6px)}
input::placeholder{color:var(--sift-color-muted,#57606a)}
input:focus-visible{outline:2px solid var(--sift-color-focus,#0969da);outline-offset:1px}
[part~=spinner]{position:absolute;inset-inline-end:.75em;inset-block-start:calc(50% - .5em);inline-size:1em;block-size:1em;border:2px solid var(--sift-color-border,#6e7781);border-block-start-color:transparent;border-radius:50%;animation:sift-spin .8s linear infinite,sift-late 0s .3s both}
[part~=popup]{position:absolute;inset-inline:0;inset-block-start:calc(100% + 4px);z-index:var(--sift-z-index,1000);background:var(--sift-color-bg,#fff);border:1px solid var(--sift-color-popup-border,#d0d7de);border-radius:var(--sift-radius,6px);box-shadow:var(--sift-shadow,0 8px 24px rgb(0 0 0/.12));overflow:hidden}
[part~=listbox]{position:relative;list-style:none;margin:0;padding-block:4px;padding-inline:0;max-block-size:var(--sift-max-height,24em);overflow-y:auto;overscroll-behavior:contain}
[part~=option]{display:flex;align-items:center;gap:.75em;min-block-size:44px;padding-block:.375em;padding-inline:.75em;cursor:pointer;text-align:start;-webkit-tap-highlight-color:transparent}
[part~=option][aria-selected=true]{background:var(--sift-color-active,#ddf4ff)}
[part~=thumbnail]{flex:none;inline-size:var(--sift-thumbnail-size,40px);block-size:var(--sift-thumbnail-size,40px);border-radius:4px;object-fit:cover;background:var(--sift-color-placeholder,#eaeef2)}
[part~=placeholder]{display:grid;place-items:center;color:var(--sift-color-muted,#57606a);font-weight:600}
[part~=text]{display:flex;flex-direction:column;min-inline-size:0}
[part~=title],[part~=detail]{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
[part~=detail],[part~=message]{color:var(--sift-color-muted,#57606a);font-size:.875em}
[part~=message]{padding:.75em}
mark{background:var(--sift-highlight-bg,transparent);color:inherit;font-weight:var(--sift-highlight-weight,700)}
.sr{position:absolute;inline-size:1px;block-size:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
@keyframes sift-spin{to{transform:rotate(1turn)}}
@keyframes sift-late{from{visibility:hidden}to{visibility:visible}}
@media (max-width:480px){:host{display:block;inline-size:100%}}
@media (prefers-reduced-motion:reduce){[part~=spinner]{animation:sift-late 0s .3s both}}
@media (forced-colors:active){[part~=option][aria-selected=true]{outline:2px solid Highlight;outline-offset:-2px}mark{text-decoration:underline}}
`;
