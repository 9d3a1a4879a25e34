// Utf8.cs: strings across the C ABI as NUL-terminated UTF-8, whatever the runtime's
// default string marshalling is.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;

namespace Inlay
{
    internal static class Utf8
    {
        // NUL-terminated UTF-8; a string with a NUL inside cannot cross the C ABI intact.
        internal static byte[] Encode(string s, string what)
        {
            if (s == null) throw InlayException.Invalid(what + " is null");
            if (s.IndexOf('\0') >= 0) throw InlayException.Invalid(what + " contains a NUL character");
            var bytes = new byte[Encoding.UTF8.GetByteCount(s) + 1];
            Encoding.UTF8.GetBytes(s, 0, s.Length, bytes, 0);
            return bytes;
        }

        internal static string Decode(IntPtr p, int length)
        {
            if (p == IntPtr.Zero || length == 0) return "";
            var bytes = new byte[length];
            Marshal.Copy(p, bytes, 0, length);
            return Encoding.UTF8.GetString(bytes);
        }

        internal static string Decode(IntPtr p)
        {
            if (p == IntPtr.Zero) return "";
            int n = 0;
            while (Marshal.ReadByte(p, n) != 0) n++;
            return Decode(p, n);
        }

        // Copies into unmanaged memory, recorded in `owned` for freeing.
        internal static IntPtr Alloc(string s, string what, List<IntPtr> owned)
        {
            byte[] bytes = Encode(s, what);
            IntPtr p = Marshal.AllocHGlobal(bytes.Length);
            owned.Add(p);
            Marshal.Copy(bytes, 0, p, bytes.Length);
            return p;
        }

        internal static void FreeAll(List<IntPtr> owned)
        {
            foreach (IntPtr p in owned) Marshal.FreeHGlobal(p);
            owned.Clear();
        }
    }
}
