/* mangle.c: the one spelling of a .tile name in CUDA, C and Python (the
 * scheme and why it is injective: mangle.h). */
#include "util/mangle.h"

#include <string.h>

void mg_cuda(strbuf *b, const char *name)
{
    sb_puts(b, "v_");
    sb_puts(b, name);
}

/* ORDER mg_c_kind. Words without '_': the kind is what precedes the first '_'. */
static const char *const c_kind_word[] = {"t", "b", "s", "p", "out", "in", "o", "l"};

void mg_c(strbuf *b, mg_c_kind kind, const char *name, size_t n)
{
    sb_puts(b, c_kind_word[kind]);
    sb_putc(b, '_');
    sb_add(b, name, n);
}

static int starts(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

/* The headers of C11 and POSIX (and CUDA's the wrapper's users include):
 * a graph's NAME.h named like one would hide it from every file compiled
 * with -I on the output directory (the wrapper's own <stdint.h> too). */
static const char *const c_headers[] = {
    "assert", "complex", "ctype", "errno", "fenv", "float", "inttypes", "iso646", "limits", "locale", "math",
    "setjmp", "signal", "stdalign", "stdarg", "stdatomic", "stdbool", "stddef", "stdint", "stdio", "stdlib",
    "stdnoreturn", "string", "tgmath", "threads", "time", "uchar", "wchar", "wctype", "aio", "cpio", "dirent",
    "dlfcn", "fcntl", "fmtmsg", "fnmatch", "ftw", "glob", "grp", "iconv", "langinfo", "libgen", "monetary", "mqueue",
    "ndbm", "netdb", "nl_types", "poll", "pthread", "pwd", "regex", "sched", "search", "semaphore", "spawn",
    "strings", "stropts", "syslog", "tar", "termios", "trace", "ulimit", "unistd", "utime", "utmpx", "wordexp",
    "alloca", "malloc", "memory", "features", "endian", "cuda", "cuda_runtime", "cuda_fp16", "cuda_bf16", "nvrtc",
    "cublas", "mma"};

void mg_c_graph(strbuf *b, const char *name)
{
    /* tl_*: the wrapper's own; tilec_*, TILEC_*: the library's; _*: the
     * implementation's; a header's name; g_*: what this mapping makes, so it
     * stays injective */
    int header = 0;
    for (size_t i = 0; i < sizeof c_headers / sizeof c_headers[0] && !header; i++)
        header = !strcmp(name, c_headers[i]);
    if (header || starts(name, "tl") || starts(name, "tilec") || starts(name, "TILEC") || starts(name, "_") ||
        starts(name, "g_"))
        sb_puts(b, "g_");
    sb_puts(b, name);
}

/* Python keywords and builtins (Python 3.12), and the names the generated
 * wrapper uses itself (functions, locals, modules it or the package imports). */
static const char *const py_reserved[] = {
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "match", "case", "type",
    "ArithmeticError", "AssertionError", "AttributeError", "BaseException", "BaseExceptionGroup",
    "BlockingIOError", "BrokenPipeError", "BufferError", "BytesWarning", "ChildProcessError",
    "ConnectionAbortedError", "ConnectionError", "ConnectionRefusedError", "ConnectionResetError",
    "DeprecationWarning", "EOFError", "Ellipsis", "EncodingWarning", "EnvironmentError", "Exception",
    "ExceptionGroup", "FileExistsError", "FileNotFoundError", "FloatingPointError", "FutureWarning",
    "GeneratorExit", "IOError", "ImportError", "ImportWarning", "IndentationError", "IndexError",
    "InterruptedError", "IsADirectoryError", "KeyError", "KeyboardInterrupt", "LookupError", "MemoryError",
    "ModuleNotFoundError", "NameError", "NotADirectoryError", "NotImplemented", "NotImplementedError", "OSError",
    "OverflowError", "PendingDeprecationWarning", "PermissionError", "ProcessLookupError", "PythonFinalizationError",
    "RecursionError", "ReferenceError", "ResourceWarning", "RuntimeError", "RuntimeWarning", "StopAsyncIteration",
    "StopIteration", "SyntaxError", "SyntaxWarning", "SystemError", "SystemExit", "TabError", "TimeoutError",
    "TypeError", "UnboundLocalError", "UnicodeDecodeError", "UnicodeEncodeError", "UnicodeError",
    "UnicodeTranslateError", "UnicodeWarning", "UserWarning", "ValueError", "Warning", "ZeroDivisionError", "abs",
    "aiter", "all", "anext", "any", "ascii", "bin", "bool", "breakpoint", "bytearray", "bytes", "callable", "chr",
    "classmethod", "compile", "complex", "copyright", "credits", "delattr", "dict", "dir", "divmod", "enumerate",
    "eval", "exec", "exit", "filter", "float", "format", "frozenset", "getattr", "globals", "hasattr", "hash",
    "help", "hex", "id", "input", "int", "isinstance", "issubclass", "iter", "len", "license", "list", "locals",
    "map", "max", "memoryview", "min", "next", "object", "oct", "open", "ord", "pow", "print", "property", "quit",
    "range", "repr", "reversed", "round", "set", "setattr", "slice", "sorted", "staticmethod", "str", "sum",
    "super", "tuple", "vars", "zip",
    /* the wrapper's own names, and the modules it and the package import */
    "tilec", "os", "sys", "time", "ctypes", "struct", "array", "random", "math", "load", "call", "release",
    "externs", "main", "TILE_FILE", "TILE_SOURCE", "device", "kernels", "pool", "ext", "module", "args", "argv",
    "iters", "times", "out", "it", "t0", "buf", "buffers"};

void mg_py(strbuf *b, const char *name, size_t n)
{
    int mangle = n == 0 || name[0] == '_' || name[n - 1] == '_';
    for (size_t i = 0; !mangle && i < sizeof py_reserved / sizeof py_reserved[0]; i++)
        mangle = strlen(py_reserved[i]) == n && !memcmp(py_reserved[i], name, n);
    sb_add(b, name, n);
    if (mangle)
        sb_putc(b, '_');
}

/* The top-level modules of Python's standard library (sys.stdlib_module_names
 * of 3.11, which still has those 3.12 and 3.13 removed, and the 3.14
 * additions; names with a leading '_' are mangled anyway), and the packages
 * a generated module or its caller imports. A module file named like one
 * of them (functools.py beside a script) would shadow it for every import
 * in that directory. names::python_module_names_shadow_nothing checks the
 * list against the running Python. */
static const char *const py_modules[] = {
    "abc", "aifc", "annotationlib", "antigravity", "argparse", "array", "ast", "asynchat", "asyncio", "asyncore",
    "atexit", "audioop", "base64", "bdb", "binascii", "bisect", "builtins", "bz2", "cProfile", "calendar", "cgi",
    "cgitb", "chunk", "cmath", "cmd", "code", "codecs", "codeop", "collections", "colorsys", "compileall",
    "compression", "concurrent", "configparser", "contextlib", "contextvars", "copy", "copyreg", "crypt", "csv",
    "ctypes", "curses", "dataclasses", "datetime", "dbm", "decimal", "difflib", "dis", "distutils", "doctest",
    "email", "encodings", "ensurepip", "enum", "errno", "faulthandler", "fcntl", "filecmp", "fileinput", "fnmatch",
    "fractions", "ftplib", "functools", "gc", "genericpath", "getopt", "getpass", "gettext", "glob", "graphlib",
    "grp", "gzip", "hashlib", "heapq", "hmac", "html", "http", "idlelib", "imaplib", "imghdr", "imp", "importlib",
    "inspect", "io", "ipaddress", "itertools", "json", "keyword", "lib2to3", "linecache", "locale", "logging",
    "lzma", "mailbox", "mailcap", "marshal", "math", "mimetypes", "mmap", "modulefinder", "msilib", "msvcrt",
    "multiprocessing", "netrc", "nis", "nntplib", "nt", "ntpath", "nturl2path", "numbers", "opcode", "operator",
    "optparse", "os", "ossaudiodev", "pathlib", "pdb", "pickle", "pickletools", "pipes", "pkgutil", "platform",
    "plistlib", "poplib", "posix", "posixpath", "pprint", "profile", "pstats", "pty", "pwd", "py_compile", "pyclbr",
    "pydoc", "pydoc_data", "pyexpat", "queue", "quopri", "random", "re", "readline", "reprlib", "resource",
    "rlcompleter", "runpy", "sched", "secrets", "select", "selectors", "shelve", "shlex", "shutil", "signal",
    "site", "smtpd", "smtplib", "sndhdr", "socket", "socketserver", "spwd", "sqlite3", "sre_compile",
    "sre_constants", "sre_parse", "ssl", "stat", "statistics", "string", "stringprep", "struct", "subprocess",
    "sunau", "symtable", "sys", "sysconfig", "syslog", "tabnanny", "tarfile", "telnetlib", "tempfile", "termios",
    "textwrap", "this", "threading", "time", "timeit", "tkinter", "token", "tokenize", "tomllib", "trace",
    "traceback", "tracemalloc", "tty", "turtle", "turtledemo", "types", "typing", "unicodedata", "unittest",
    "urllib", "uu", "uuid", "venv", "warnings", "wave", "weakref", "webbrowser", "winreg", "winsound", "wsgiref",
    "xdrlib", "xml", "xmlrpc", "zipapp", "zipfile", "zipimport", "zlib", "zoneinfo",
    /* third-party packages the wrapper or its users import */
    "tilec", "torch", "numpy", "cupy"};

void mg_py_module(strbuf *b, const char *name, size_t n)
{
    for (size_t i = 0; i < sizeof py_modules / sizeof py_modules[0]; i++)
        if (strlen(py_modules[i]) == n && !memcmp(py_modules[i], name, n)) {
            sb_add(b, name, n);
            sb_putc(b, '_'); /* a kept name never ends with '_' (mg_py): still injective */
            return;
        }
    mg_py(b, name, n);
}

void mg_py_helper(strbuf *b, const char *name, size_t n, const char *kind)
{
    sb_putc(b, '_');
    sb_add(b, name, n);
    sb_putc(b, '_');
    sb_puts(b, kind);
}
