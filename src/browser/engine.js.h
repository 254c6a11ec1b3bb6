/* engine.js.h - the in-page half of atr's browser actions: one JavaScript
 * function (sel, op, arg) that resolves a Playwright selector and acts on
 * the element, evaluated through Runtime.evaluate. Included by driver.c.
 *
 * Selectors: CSS (plain or css=), xpath= and //..., text= and
 * internal:text= ("..."i substring, "..."s exact, bare: substring, case and
 * whitespace folded), role= and internal:role= (implicit and explicit
 * ARIA roles, [name="..."i|s] by accessible name: aria-label, labels,
 * alt, title, text), internal:label=, internal:testid= and data-testid=,
 * id=, and chains joined by " >> " with nth=N. Anything else of the form
 * engine=... is reported as unsupported.
 *
 * Returns {u: message} for an unsupported selector, {n: 0} when nothing
 * matches, else {n, v: visible, x, y: the centre in CSS pixels, r: op's
 * result}. */
static const char engine_js[] =
"(function(sel, op, arg){\n"
"const norm=s=>(s||'').replace(/\\s+/g,' ').trim();\n"
"function unq(v){v=v.trim();let m=/^\"((?:[^\"\\\\]|\\\\.)*)\"([is]?)$/.exec(v)||/^'((?:[^'\\\\]|\\\\.)*)'([is]?)$/.exec(v);\n"
" if(m)return {t:m[1].replace(/\\\\(.)/g,'$1'),exact:m[2]==='s',ci:m[2]!=='s'};return {t:v,exact:false,ci:true};}\n"
"function tmatch(have,q){have=norm(have);let w=norm(q.t);if(q.ci&&!q.exact){have=have.toLowerCase();w=w.toLowerCase();}\n"
" return q.exact?have===w:have.includes(w);}\n"
"function all(root){return Array.from((root.querySelectorAll?root:document).querySelectorAll('*'));}\n"
"function byText(root,v){const q=unq(v);const c=all(root).filter(e=>!/^(SCRIPT|STYLE|HEAD|TITLE|NOSCRIPT)$/.test(e.tagName)&&tmatch(e.innerText!==undefined?e.innerText:e.textContent,q));\n"
" return c.filter(e=>!c.some(o=>o!==e&&e.contains(o)));}\n"
"const implicit={button:'button,input[type=button],input[type=submit],input[type=reset],input[type=image],summary',\n"
" link:'a[href],area[href]',textbox:'input:not([type]),input[type=text],input[type=email],input[type=tel],input[type=url],input[type=password],textarea',\n"
" searchbox:'input[type=search]',checkbox:'input[type=checkbox]',radio:'input[type=radio]',combobox:'select:not([multiple]),input[list]',\n"
" listbox:'select[multiple]',option:'option',heading:'h1,h2,h3,h4,h5,h6',list:'ul,ol',listitem:'li',img:'img[alt]:not([alt=\"\"])',\n"
" navigation:'nav',main:'main',banner:'header',contentinfo:'footer',form:'form',table:'table',row:'tr',cell:'td',\n"
" columnheader:'th',spinbutton:'input[type=number]',slider:'input[type=range]',dialog:'dialog',article:'article',\n"
" region:'section[aria-label],section[aria-labelledby]',paragraph:'p',separator:'hr'};\n"
"function accName(e){let s=e.getAttribute('aria-label');if(s)return s;\n"
" const lb=e.getAttribute('aria-labelledby');if(lb)return lb.split(/\\s+/).map(i=>{const x=document.getElementById(i);return x?x.textContent:'';}).join(' ');\n"
" if(e.labels&&e.labels.length)return Array.from(e.labels).map(l=>l.textContent).join(' ');\n"
" if(e.tagName==='IMG'||e.tagName==='AREA'||(e.tagName==='INPUT'&&e.type==='image'))return e.getAttribute('alt')||e.getAttribute('title')||'';\n"
" if(e.tagName==='INPUT'&&/^(button|submit|reset)$/.test(e.type))return e.value||({submit:'Submit',reset:'Reset'})[e.type]||'';\n"
" if(/^(INPUT|TEXTAREA|SELECT)$/.test(e.tagName))return e.getAttribute('title')||e.getAttribute('placeholder')||'';\n"
" return e.innerText!==undefined&&e.innerText!==''?e.innerText:(e.textContent||e.getAttribute('title')||'');}\n"
"function byRole(root,v){const m=/^([a-z]+)(.*)$/.exec(v.trim());if(!m)return null;const role=m[1];let name=null,rest=m[2];\n"
" const am=/\\[\\s*name\\s*=\\s*(\"(?:[^\"\\\\]|\\\\.)*\"[is]?|'(?:[^'\\\\]|\\\\.)*'[is]?)\\s*\\]/.exec(rest);if(am){name=unq(am[1]);rest=rest.replace(am[0],'');}\n"
" if(/\\[/.test(rest)&&!/^(\\[\\s*include-hidden\\s*=\\s*true\\s*\\]|\\[\\s*exact\\s*=\\s*(true|false)\\s*\\])*$/.test(rest.trim()))return null;\n"
" if(/\\[\\s*exact\\s*=\\s*true\\s*\\]/.test(rest)&&name){name.exact=true;}\n"
" const css='[role~=\"'+role+'\"]'+(implicit[role]?','+implicit[role]:'');\n"
" return Array.from((root.querySelectorAll?root:document).querySelectorAll(css)).filter(e=>{const r=e.getAttribute('role');\n"
"  if(r&&r.split(/\\s+/)[0]!==role)return false;return !name||tmatch(accName(e),name);});}\n"
"function byLabel(root,v){const q=unq(v);return all(root).filter(e=>/^(INPUT|TEXTAREA|SELECT)$/.test(e.tagName)&&(\n"
" (e.labels&&Array.from(e.labels).some(l=>tmatch(l.textContent,q)))||tmatch(e.getAttribute('aria-label')||'',q)));}\n"
"function byXpath(root,v){const r=document.evaluate(v,root.nodeType?root:document,null,XPathResult.ORDERED_NODE_SNAPSHOT_TYPE,null);\n"
" const out=[];for(let i=0;i<r.snapshotLength;i++){const n=r.snapshotItem(i);if(n.nodeType===1)out.push(n);}return out;}\n"
"function one(root,p){p=p.trim();let m;\n"
" if(p.startsWith('//')||p.startsWith('..'))return byXpath(root,p);\n"
" if(!(m=/^([a-zA-Z_][\\w:-]*)=([\\s\\S]*)$/.exec(p)))return Array.from((root.querySelectorAll?root:document).querySelectorAll(p));\n"
" const en=m[1],v=m[2];\n"
" switch(en){case 'css':return Array.from((root.querySelectorAll?root:document).querySelectorAll(v));\n"
"  case 'xpath':return byXpath(root,v);case 'text':case 'internal:text':return byText(root,v);\n"
"  case 'role':case 'internal:role':{const r=byRole(root,v);if(r===null)throw {u:'unsupported role selector '+v};return r;}\n"
"  case 'internal:label':return byLabel(root,v);case 'id':return Array.from(document.querySelectorAll('[id=\"'+CSS.escape(unq(v).t)+'\"]'));\n"
"  case 'internal:testid':{const t=/\\[([\\w-]+)=(.*)\\]$/.exec(v);if(!t)throw {u:'unsupported testid selector '+v};const q=unq(t[2]);\n"
"   return all(root).filter(e=>{const a=e.getAttribute(t[1]);return a!==null&&(q.exact?a===q.t:a===q.t);});}\n"
"  case 'data-testid':return Array.from((root.querySelectorAll?root:document).querySelectorAll('[data-testid=\"'+CSS.escape(unq(v).t)+'\"]'));\n"
"  default:throw {u:'unsupported selector engine '+en+'='};}}\n"
"function resolve(s){let cur=[document];for(const part of s.split(/\\s+>>\\s+/)){const p=part.trim();let m;\n"
" if((m=/^nth=(-?\\d+)$/.exec(p))){const i=+m[1];const e=cur[i<0?cur.length+i:i];cur=e?[e]:[];continue;}\n"
" if(p==='visible=true'){cur=cur.filter(e=>e.getClientRects&&e.getClientRects().length>0);continue;}\n"
" const next=[];for(const r of cur)for(const e of one(r,p))if(!next.includes(e))next.push(e);cur=next;if(!cur.length)break;}\n"
" return cur.filter(e=>e!==document);}\n"
"let els;try{els=resolve(sel);}catch(x){return {u:x&&x.u?x.u:'invalid selector: '+String(x&&x.message||x)};}\n"
"if(!els.length)return {n:0};const e=els[0];\n"
"if(op!=='count'&&e.scrollIntoView)e.scrollIntoView({block:'center',inline:'center'});\n"
"const b=e.getBoundingClientRect();const vis=b.width>0&&b.height>0&&getComputedStyle(e).visibility!=='hidden';\n"
"let r=null;\n"
"if(op==='focus'){e.focus();}\n"
"else if(op==='clear'){e.focus();if('value' in e&&e.tagName!=='SELECT'){e.value='';if(e.select)e.select();}else if(e.isContentEditable){e.textContent='';}\n"
" e.dispatchEvent(new Event('input',{bubbles:true}));}\n"
"else if(op==='select'){const want=arg||[];const opts=Array.from(e.options||[]);let hit=0;\n"
" for(const o of opts){o.selected=want.some(w=>typeof w==='number'?o.index===w:(o.value===w||norm(o.label)===norm(w)));if(o.selected)hit++;}\n"
" e.dispatchEvent(new Event('input',{bubbles:true}));e.dispatchEvent(new Event('change',{bubbles:true}));r=hit;}\n"
"return {n:els.length,v:vis,x:b.left+b.width/2,y:b.top+b.height/2,r:r};\n"
"})";
