function Set-LocalUserPassword {
    param(
        [Parameter(Mandatory = $true)][string]$UserName,
        [Parameter(Mandatory = $true)][string]$Password
    )
    $secure = ConvertTo-PlainSecureString -Text $Password
    $user = Get-LocalUser -Name $UserName -ErrorAction SilentlyContinue
    if ($null -eq $user) {
        New-LocalUser -Name $UserName -Password $secure -PasswordNeverExpires | Out-Null
        Add-LocalGroupMember -Group 'Administrators' -Member $UserName
        Write-MuranoLog "Created local administrator $UserName"
    } else {
        Set-LocalUser -Name $UserName -Password $secure
        Enable-LocalUser -Name $UserName
        Write-MuranoLog "Set the password of local user $UserName"
    }
    return $UserName
}
