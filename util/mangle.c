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
static const char *const c_kind_word[] = {"t", "b", "s", "p", "out", "in", "o"};

void mg_c(strbuf *b, mg_c_kind kind, const char *name, size_t n)
{
    sb_puts(b, c_kind_word[kind]);
    sb_putc(b, '_');
    sb_add(b, name, n);
}

static int starts(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

void mg_c_graph(strbuf *b, const char *name)
{
    /* tl_*: the wrapper's own; tilec_*, TILEC_*: the library's; _*: the
     * implementation's; g_*: what this mapping makes, so it stays injective */
    if (starts(name, "tl") || starts(name, "tilec") || starts(name, "TILEC") || starts(name, "_") ||
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

void mg_py_helper(strbuf *b, const char *name, size_t n, const char *kind)
{
    sb_putc(b, '_');
    sb_add(b, name, n);
    sb_putc(b, '_');
    sb_puts(b, kind);
}
